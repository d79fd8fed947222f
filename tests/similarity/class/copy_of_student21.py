import math

import torch
import torch.nn.functional as F
from torch import nn



def attention_scores(Q,K):
    return torch.matmul(Q,K.swapaxes(-1,-2))



def scale_scores(scores,d_k):
    # my result
    return scores * torch.rsqrt(torch.tensor(float(d_k)))



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    arr_10 = torch.arange(T_q,device=device).unsqueeze(1)
    thing_11 = torch.arange(T_k,device=device).unsqueeze(0)
    # my result
    return (thing_11 - arr_10) <= 0



def padding_mask(valid_lens,T_k):
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:,None]
    xx_13 = torch.arange(T_k,device=valid_lens.device)
    return xx_13 < valid_lens[...,None]



def masked_softmax(scores,mask=None):
    weights = torch.softmax(scores,dim=-1)
    # my result
    return weights if mask is None else weights * mask



def attention_output(weights,V):
    debug = False
    answer_tmp = torch.matmul(weights,V)
    return answer_tmp



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    T_q,T_k = Q.shape[-2],K.shape[-2]
    val_6 = mask
    if is_causal:
        zz_17 = causal_mask(T_q,T_k,device=Q.device)
        val_6 = zz_17 if val_6 is None else (val_6 & zz_17)
    tmp_16 = attention_scores(Q,K)
    item2_7 = masked_softmax(scale_scores(tmp_16,Q.shape[-1]),val_6)
    # my result
    return item2_7@V,item2_7



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        def make():
            # my result
            return nn.Linear(d_model,d_model,bias)

        self.w_q = make()
        self.w_k = make()
        self.w_v = make()
        self.w_o = make()

    def forward(self,query,key,value,mask=None,is_causal=False):
        part_0,mat_4,res_1 = query.shape
        zz_3 = key.shape[1]
        tmp_2 = self.num_heads
        res_15 = self.w_q(query).reshape(part_0,mat_4,tmp_2,-1).permute(0,2,1,3)
        yy_12 = self.w_k(key).reshape(part_0,zz_3,tmp_2,-1).permute(0,2,1,3)
        mat_18 = self.w_v(value).reshape(part_0,zz_3,tmp_2,-1).permute(0,2,1,3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:,None]
        part_14,piece_19 = scaled_dot_product_attention(res_15,yy_12,mat_18,mask=mask,is_causal=is_causal)
        part_14 = part_14.permute(0,2,1,3).contiguous().view(part_0,mat_4,res_1)
        # my result
        return self.w_o(part_14),piece_19



def dot_product_variance(d_k,num_samples=10000,generator=None):
    piece_5 = torch.randn((num_samples,d_k),generator=generator)
    buf_8 = torch.randn((num_samples,d_k),generator=generator)
    acc_9 = torch.einsum("nd,nd->n",piece_5,buf_8)
    # my result
    return float(acc_9.var())
