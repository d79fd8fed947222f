import math

import torch
import torch.nn.functional as F
from torch import nn



def attention_scores(Q,K):
    return torch.matmul(Q,K.swapaxes(-1,-2))



def attention_output(weights,V):
    # my result
    return torch.einsum("...qk,...kv->...qv",weights,V)



def dot_product_variance(d_k,num_samples=10000,generator=None):
    mat_12 = [torch.randn(num_samples,d_k,generator=generator) for _ in range(2)]
    arr_9 = mat_12[0].mul(mat_12[1]).sum(1)
    answer_tmp = arr_9.var().item()
    return answer_tmp



def scale_scores(scores,d_k):
    return scores * d_k ** -0.5



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    debug = False
    d_k = Q.size(-1)
    scores = scale_scores(attention_scores(Q,K),d_k)
    if is_causal:
        thing_5 = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = thing_5 if mask is None else mask & thing_5
    weights = masked_softmax(scores,mask)
    # my result
    return attention_output(weights,V),weights



def masked_softmax(scores,mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask,float('-inf'))
    # my result
    return torch.softmax(scores,dim=-1)



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    res_11 = torch.arange(T_q,device=device)[:,None]
    xx_6 = torch.arange(T_k,device=device)[None,:]
    return xx_6 <= res_11



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q,self.w_k,self.w_v,self.w_o = (nn.Linear(d_model,d_model,bias=bias) for _ in range(4))

    def forward(self,query,key,value,mask=None,is_causal=False):
        piece_0,yy_4,tmp_1 = query.shape
        val_3 = key.shape[1]
        buf_2 = self.num_heads
        acc_10 = self.w_q(query).reshape(piece_0,yy_4,buf_2,-1).permute(0,2,1,3)
        part_7 = self.w_k(key).reshape(piece_0,val_3,buf_2,-1).permute(0,2,1,3)
        piece_14 = self.w_v(value).reshape(piece_0,val_3,buf_2,-1).permute(0,2,1,3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:,None]
        item2_8,tmp_15 = scaled_dot_product_attention(acc_10,part_7,piece_14,mask=mask,is_causal=is_causal)
        item2_8 = item2_8.permute(0,2,1,3).contiguous().view(piece_0,yy_4,tmp_1)
        # my result
        return self.w_o(item2_8),tmp_15



def padding_mask(valid_lens,T_k):
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    zz_13 = torch.arange(T_k,device=valid_lens.device).expand(*valid_lens.shape,T_k)
    return zz_13 < valid_lens[...,None]
